"""Build commands of the JavaScript targets: web and react-native (after the mobile ones in --help).

They are made like every target's (``mobilegen.cli.build``); this module only places them in the listing.
"""

from __future__ import annotations

from mobilegen.cli.build import register_target_commands

register_target_commands(("web", "react-native"))
