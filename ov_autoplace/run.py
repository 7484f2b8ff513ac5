"""``python -m ov_autoplace.run [--] [python] app.py args...``: run an unchanged app with OpenVINO's compile routed
through ov_autoplace (``routing.py``; the same as ``ov-autoplace run``)."""

import sys

from ov_autoplace.routing import main

if __name__ == "__main__":
    sys.exit(main())
