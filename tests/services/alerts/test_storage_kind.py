"""The storage_quota rule kind: its threshold's bounds and the PromQL it renders (alerts/kinds.py),
reading the families the store collector publishes (core/metrics.py)."""

import pytest

from yitong_services.alerts.kinds import RuleError, check, expression


@pytest.mark.parametrize(
    ("threshold", "vc", "expected"),
    [
        (
            None,
            None,
            "100 * sum by (vc) (yitong_vc_storage_used_bytes) / on (vc) (yitong_vc_storage_quota_bytes > 0) >= 90",
        ),
        (
            75,
            "vision",
            '100 * sum by (vc) (yitong_vc_storage_used_bytes{vc="vision"})'
            ' / on (vc) (yitong_vc_storage_quota_bytes{vc="vision"} > 0) >= 75',
        ),
    ],
)
def test_storage_quota_renders(threshold, vc, expected):
    stored = check("storage_quota", threshold, vc, "")
    assert stored == (90.0 if threshold is None else threshold)
    assert expression("storage_quota", stored, vc, "", 15) == expected


@pytest.mark.parametrize("bad", [0, 101, float("nan")])
def test_storage_quota_threshold_bounds(bad):
    with pytest.raises(RuleError, match="storage_quota rule is % from 1 to 100"):
        check("storage_quota", bad, None, "")
