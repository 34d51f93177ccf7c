#!/usr/bin/python3
"""Holds a TCP port (listening) and runs a command with MESHRT_STORE_PORT set
to it, so that world rank 0 finds its store's port in use.
   hold-port.py COMMAND [ARGS...]"""
import os, socket, subprocess, sys

s = socket.socket()
s.bind(("", 0))
s.listen(1)
env = dict(os.environ, MESHRT_STORE_PORT=str(s.getsockname()[1]))
sys.exit(subprocess.call(sys.argv[1:], env=env))
