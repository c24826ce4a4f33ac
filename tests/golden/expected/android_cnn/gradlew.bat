@rem Gradle wrapper launcher written by mobilegen: Gradle's binary gradle-wrapper.jar is not shipped.
@rem Create gradle\wrapper\gradle-wrapper.jar once (README.md names the command); the sh gradlew bootstraps without it.
@if "%DEBUG%"=="" @echo off
setlocal
set APP_HOME=%~dp0
set WRAPPER_JAR=%APP_HOME%gradle\wrapper\gradle-wrapper.jar
if not exist "%WRAPPER_JAR%" (
  echo error: %WRAPPER_JAR% is missing; create it once with the "gradle wrapper --gradle-version ... --distribution-type bin ..." command in README.md. 1>&2
  exit /b 1
)
if defined JAVA_HOME (set JAVACMD=%JAVA_HOME%\bin\java.exe) else (set JAVACMD=java.exe)
"%JAVACMD%" -Xmx64m -Xms64m %JAVA_OPTS% %GRADLE_OPTS% "-Dorg.gradle.appname=%~n0" -classpath "%WRAPPER_JAR%" org.gradle.wrapper.GradleWrapperMain %*
exit /b %ERRORLEVEL%
