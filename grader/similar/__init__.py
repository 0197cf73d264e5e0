"""Similar submissions, for the instructor only: which students share code beyond the template and the textbook."""

from grader.similar.boilerplate import boilerplate_for
from grader.similar.compare import Pair, Region, similar_pairs
from grader.similar.pages import SimilarityReport

__all__ = ["Pair", "Region", "SimilarityReport", "boilerplate_for", "similar_pairs"]
