import sys

from bots.cli.main import main

sys.exit(main())
