"""Library side of the non-build commands: inspect, check, fix, export, convert."""
