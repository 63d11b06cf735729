"""The HTTP server: the JSON contract over ``/api/v1``, one store per tenant (``hms serve``).

Needs the ``server`` extra (starlette, hypercorn). ``app.ServerApp`` is the ASGI application over a
``tenants.TenantPool``; ``serve.serve`` runs it under hypercorn's trio worker with a graceful
shutdown. This package module imports nothing itself, so that ``hmsengine.client`` can use the
error classes of ``tenants`` and ``auth`` without the server's dependencies.
"""
