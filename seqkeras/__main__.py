import sys

from seqkeras.cli import main

sys.exit(main())
