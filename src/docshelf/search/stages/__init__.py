"""The ranking stages, one rule a file; ``search/order.py`` says in what order they run.

Each stage is an immutable value (its settings, a ``NamedTuple``; a ``Fixed`` when it
has none) called with the ``Search`` it changes (search/pipeline.py). Candidates stay in
order by precedence, then score (search/candidate.py): a stage that knows more than a
score gives a precedence; one that changes scores re-sorts.
"""
