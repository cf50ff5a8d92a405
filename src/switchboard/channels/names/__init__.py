"""Name resolution: which channel a typed name picks, the names shown, and the words of every
refusal (channel-registry.md §3, §4.4-§4.7).
"""
