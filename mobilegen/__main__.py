"""``python -m mobilegen``; ``run`` is also the right console-script target (signals handled from the start)."""

import sys


def run() -> None:
    from mobilegen.infra import signals, threads

    threads.passive_waits()  # before anything imports torch (OpenMP reads it when it is loaded)
    signals.install()  # before the CLI's own imports: Ctrl-C is handled the same way from the first moment
    try:
        from mobilegen.cli import main

        main()
    except KeyboardInterrupt:  # raised before main() took over (nothing was written yet)
        sys.stderr.write("interrupted\n")
        signals.quiet_exit(signals.exit_code())


if __name__ == "__main__":
    run()
