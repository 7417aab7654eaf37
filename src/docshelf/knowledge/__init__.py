"""Knowledge drawn from indexed documents: enrichment (summary, type, concepts,
distillates), from the LLM when configured, else offline."""
