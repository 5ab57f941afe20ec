"""The command line's entry, as the README shows it: `python cli.py estimate --model llama2-7b`.

The commands live in the cli/ package (one module per command); run as a file, this calls its
main(). `import cli` finds the package, not this file.
"""

import sys

from cli import main

if __name__ == "__main__":
    sys.exit(main())
