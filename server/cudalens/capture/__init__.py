"""Capture a real launch of a kernel from the user's program and replay it in the runner.

``build`` builds the CUPTI recorder library (``recorder.cpp``); ``program`` runs the user's
command with it injected; ``raw`` reads what the recorder wrote; ``roles`` decides each
buffer's role; ``container`` writes and reads the capture file (NumPy ``.npz``) and its JSON
manifest; ``sources`` finds the kernel's source and its key; ``replay`` turns a capture into the
runner's captured case.
"""
