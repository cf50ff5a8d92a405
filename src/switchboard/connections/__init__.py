"""One connector connection: link, handshake and grant, registration, incoming, manifest changes,
publish requests, and the supervisor that keeps it up.
"""
