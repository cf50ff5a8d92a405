"""The server suite: the kit plays the MCPL host against a connector and checks S-xx.

Modules: :mod:`..common.options` (timing), :mod:`.answers` (how the kit answers the server),
:mod:`.session` (one connection), :mod:`.context` (what a check gets, and the registry),
:mod:`..common.shapes` (pure shape rules), :mod:`.scenarios` (shared steps), and one module per
group of checks (:mod:`.handshake`, :mod:`.policy`, :mod:`.grant`, :mod:`.requests`,
:mod:`.observed`, :mod:`.hooks`, :mod:`.channels`, :mod:`.streaming`, :mod:`.manifest`,
:mod:`.state`).
Import :mod:`switchboard.conformance.server_suite` to get the complete registry.
"""
