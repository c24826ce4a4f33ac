@rem Gradle wrapper launcher written by mobilegen (no binary is shipped with this project).
@rem Get gradle\wrapper\gradle-wrapper.jar once: open the project in Android Studio, or run
@rem "gradle wrapper" in this folder (see README.md).
@if "%DEBUG%"=="" @echo off
setlocal
set APP_HOME=%~dp0
set WRAPPER_JAR=%APP_HOME%gradle\wrapper\gradle-wrapper.jar
if not exist "%WRAPPER_JAR%" (
  echo error: %WRAPPER_JAR% is missing. Open the project in Android Studio or run "gradle wrapper". 1>&2
  exit /b 1
)
if defined JAVA_HOME (set JAVACMD=%JAVA_HOME%\bin\java.exe) else (set JAVACMD=java.exe)
"%JAVACMD%" -Xmx64m -Xms64m %JAVA_OPTS% %GRADLE_OPTS% "-Dorg.gradle.appname=%~n0" -classpath "%WRAPPER_JAR%" org.gradle.wrapper.GradleWrapperMain %*
exit /b %ERRORLEVEL%
