"""cudalens: measured, verified CUDA kernel optimization (editor side: CLI, source model, spec, optimizer)."""

__version__ = "0.1.0"
