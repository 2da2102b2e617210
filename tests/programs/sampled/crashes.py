"""Dies of a segmentation fault after a little work: ``python crashes.py``."""

import os
import signal

from shares import spin

spin(0.2)
os.kill(os.getpid(), signal.SIGSEGV)
