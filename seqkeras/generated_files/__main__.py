import sys

from seqkeras.generated_files.generate import main

sys.exit(main())
