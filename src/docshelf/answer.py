"""Moved to ``docshelf.knowledge.answer``; this name stays while other modules move."""

from docshelf.knowledge.answer import *  # noqa: F403
from docshelf.knowledge.answer import SENTENCE_BOUNDARY as SENTENCE_BOUNDARY
