"""Adapters that make docshelf a part of other frameworks (each an optional extra):
``langchain`` — ``DocshelfRetriever``, a LangChain retriever."""
