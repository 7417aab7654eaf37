"""What docshelf knows beyond the text: grounded answers (``answer``) and enrichment
(summary, type, concepts, distillates), from the LLM when configured, else offline."""
