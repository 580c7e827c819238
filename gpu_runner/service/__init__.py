"""The runner as an HTTP+JSON service (FastAPI, served by uvicorn).

``app`` builds the application; ``schema`` holds the request and response bodies, made from
the runner's contract data classes (``gpu_runner.problem``, ``gpu_runner.report``) so the wire
format has one source of truth; ``serve`` binds and runs it; ``command`` is the ``cudalens
runner`` command line; ``local`` starts one as a child process for a client.
Importing this package imports nothing heavy; ``schema`` needs only pydantic.
"""
