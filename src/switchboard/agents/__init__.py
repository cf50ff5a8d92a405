"""What several agents sharing one Switchboard need (docs/agents.md): who they are (the
:mod:`.roster`), which sessions each has (:mod:`.attach`), which traffic goes to whom
(:mod:`.routing`), mail between them (:mod:`.mail`, stored as :mod:`.mailmark` says) and how long
each lives (:mod:`.lifetimes`).

What one agent's tools do is :mod:`switchboard.host.agent`; this package is about the agents
together.
"""
