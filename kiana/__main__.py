from __future__ import annotations

import sys

from kiana.cli import main

sys.exit(main())
