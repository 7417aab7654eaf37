"""Measuring retrieval: BEIR data (``beir``), passages grouped into long files
(``long``), docqa sets of questions over real collections (``docqa_set``, ``docqa``),
and what ``docshelf eval`` runs over them (``run``)."""
