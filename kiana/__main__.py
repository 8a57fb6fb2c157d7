from __future__ import annotations

import sys

try:
    from kiana.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python imported the CLI: no traceback
    print("kiana: interrupted before it started: nothing was done", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
