"""A Ray Serve application for RayFleet's tests: it answers every request with the version it
was built with, taken from its serveConfigV2 args, so a response names the revision that served
it. It needs only Ray Serve, so a head started with this directory on its PYTHONPATH imports it
without fetching anything.

    import_path: versioned:build
    args: {"version": "v1"}
"""

from ray import serve
from starlette.requests import Request


@serve.deployment(ray_actor_options={"num_cpus": 0.1})
class Version:
    def __init__(self, version: str):
        self._version = version

    async def __call__(self, request: Request) -> dict:
        return {"version": self._version}


def build(args: dict) -> serve.Application:
    # A missing version is an error at deploy time, reported by Ray as DEPLOY_FAILED.
    return Version.bind(str(args["version"]))
