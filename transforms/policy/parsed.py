"""What a parse gives (Parse): shared by the HTML and text parser (policy/html.py) and the
readers of other documents (policy/documents.py). Pure, no Beam."""

import dataclasses
from typing import Dict, List, Optional, Tuple

__all__ = ['Parse']


@dataclasses.dataclass
class Parse:
    status: str                          # success, success_redirect, failed, notparsed
    title: str = ''
    text: str = ''
    outlinks: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    metadata: Dict[str, str] = dataclasses.field(default_factory=dict)
    refresh: Optional[Tuple[str, int]] = None       # (target URL, seconds)
    noindex: bool = False
    nofollow: bool = False
    main_text: str = ''                  # without boilerplate (policy/maintext.py), if asked
