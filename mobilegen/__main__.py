import sys

try:
    from mobilegen.cli import main
except KeyboardInterrupt:  # Ctrl-C before mobilegen has started: nothing was written yet
    sys.stderr.write("interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    main()
