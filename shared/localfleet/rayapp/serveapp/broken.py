"""A Ray Serve application for RayFleet's tests that raises at import, which Ray reports as
DEPLOY_FAILED with this message.

    import_path: broken:app
"""

raise RuntimeError("rayfleet test application: broken at import")
