"""``python -m thoughtline.cli``."""

from thoughtline.cli import main

main()
