"""spans: half-open intervals and the set algebra on them."""

from .dates import days, month_of, split_by_month
from .interval import Interval
from .ops import gaps, merge, subtract, total_length

__all__ = ["Interval", "days", "gaps", "merge", "month_of", "split_by_month", "subtract", "total_length"]
__version__ = "1.2.0"
