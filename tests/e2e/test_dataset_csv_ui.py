"""A CSV dataset uploaded in Chromium, then previewed page by page with Next and Previous."""

import csv
import re
import uuid


def test_a_csv_upload_is_previewed_page_by_page(page, tmp_path):
    token = uuid.uuid4().hex[:8]
    path = tmp_path / f"csv-rows-{token}.csv"
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["instruction", "output"])
        writer.writerows([[f"echo {token} {i}", str(i)] for i in range(1, 26)])
    page.goto("/datasets")
    page.get_by_label("Dataset file").set_input_files(str(path))
    page.get_by_role("button", name=re.compile(rf"^csv-rows-{token}")).wait_for()
    pager = page.locator(".preview-pager")

    pager.locator("text=Rows 1–10 of 25").wait_for()
    assert pager.get_by_role("button", name="Previous").is_disabled()
    pager.get_by_role("button", name="Next").click()
    pager.locator("text=Rows 11–20 of 25").wait_for()
    assert page.locator(".preview-row").first.text_content().startswith("line 11")  # of the stored JSONL
    pager.get_by_role("button", name="Next").click()
    pager.locator("text=Rows 21–25 of 25").wait_for()
    assert pager.get_by_role("button", name="Next").is_disabled()
    pager.get_by_role("button", name="Previous").click()
    pager.locator("text=Rows 11–20 of 25").wait_for()
