"""The LLM proposer: a model proposes kernel rewrites, the runner verifies and times them, the
findings go back, round by round (``loop.run_agent``).

Modules, one idea each: ``config`` and ``config_file`` (settings and where they come from),
``chat`` (the openai client: retries, timeouts, streaming, tools, cancellation), ``prompts``
(the prompt files in ``prompts/``), ``replies`` (candidates out of replies), ``guard``
(refusing changed signatures and side effects), ``tuning`` (``@tune`` markers), ``splice``
(candidate code into the file, lines back), ``precheck`` (local nvcc), ``facts`` (device and
baseline facts), ``feedback`` (what the model is told), ``ledger`` (tokens and cost),
``result`` (what a session produces), ``loop`` (the session).
"""

from cudalens.agent.config import AgentConfig, ConfigError, ModelPrice

__all__ = ["AgentConfig", "ConfigError", "ModelPrice", "run_agent"]


def __getattr__(name: str):
    if name == "run_agent":  # the loop imports the optimizer; load it only when asked for
        from cudalens.agent.loop import run_agent

        return run_agent
    raise AttributeError(name)
