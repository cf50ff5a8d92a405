"""switchboard.web: what Switchboard's two HTTP listeners share."""
