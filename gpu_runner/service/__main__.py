"""``python -m gpu_runner.service``: the ``cudalens runner`` command (see ``command``)."""

from gpu_runner.service.command import runner_command

if __name__ == "__main__":
    runner_command(prog_name="python -m gpu_runner.service")
