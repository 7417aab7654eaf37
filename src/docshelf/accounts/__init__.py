"""Who may see what: users and their bearer tokens (``users``), and a shared document as
one user sees it (``access``)."""
