"""Page scores: OPIC (Nutch's scoring-opic plugin). Pure, no Beam.

A scorer is any object with this interface; `OpicScoring` is the one beamcrawl uses:
  initial_score()                      score of a URL first seen through a link or redirect
  sort_value(record)                   the generator's sort value
  distribute(source, score, targets, all_count) -> [score per target]   at parse time
  update_db_score(old_score, result_score, inlink_scores) -> score      in updatedb
"""

import dataclasses
from typing import List, Optional, Sequence

from beamcrawl.transforms.policy.urlparts import host_of

__all__ = ['OpicScoring', 'CRAWL_SCORE_KEY']

CRAWL_SCORE_KEY = 'nutch.crawl.score'   # content metadata: the fetch-list score of the page


@dataclasses.dataclass(frozen=True)
class OpicScoring:
    link_internal: float = 1.0     # db.score.link.internal
    link_external: float = 1.0     # db.score.link.external
    count_filtered: bool = False   # db.score.count.filtered


    def initial_score(self) -> float:
        return 0.0

    def sort_value(self, record: dict) -> float:
        return record['score']

    def distribute(self, source: str, score: float, targets: Sequence[str],
                   all_count: int) -> List[float]:
        """The share of `score` each accepted outlink target gets (the source keeps its own)."""
        if not targets:
            return []
        share = score / (all_count if self.count_filtered and all_count else len(targets))
        origin = host_of(source)
        return [share * (self.link_internal if origin and host_of(t) == origin
                         else self.link_external) for t in targets]

    def update_db_score(self, old_score: Optional[float], result_score: float,
                        inlink_scores: Sequence[float]) -> float:
        """The page's score plus everything its inlinks brought in this update."""
        base = old_score if old_score is not None else result_score
        return base + sum(inlink_scores)
