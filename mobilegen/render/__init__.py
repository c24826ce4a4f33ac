"""Render stage: template trees → project files (Jinja), and the text escapers of generated code."""
