"""Core commands: inspect, export, convert (registered on the app)."""
