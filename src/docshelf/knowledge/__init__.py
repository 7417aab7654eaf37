"""What docshelf knows beyond the text: grounded answers (``answer``)."""
