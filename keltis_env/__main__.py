import sys

from keltis_env.cli import main

sys.exit(main())
