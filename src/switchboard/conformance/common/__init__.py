"""What both suites of the conformance kit share: the catalogue, check registry, runner, outcomes,
transcripts, replies, wire shape checks, options and reports.
"""
