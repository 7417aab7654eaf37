"""The ranking stages, one rule a file; ``search/order.py`` says in what order they run.

Each stage is a frozen dataclass (its settings) called with the ``Search`` it changes
(search/pipeline.py). Candidates stay in order by precedence, then score
(search/candidate.py): a stage that knows more than a score gives a precedence; one
that changes scores re-sorts.
"""
