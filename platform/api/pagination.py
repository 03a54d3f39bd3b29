"""Page numbers of the API's lists."""
from __future__ import annotations

from rest_framework import pagination
from rest_framework.exceptions import ValidationError


class PageNumberPagination(pagination.PageNumberPagination):
    """DRF's, with ``page`` a whole number from 1 (anything else is a 400); a page past the
    last one stays a 404 ``Invalid page.``."""

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if not (raw.isascii() and raw.isdigit()) or int(raw[:19]) < 1:
            raise ValidationError({self.page_query_param: ["must be a whole number from 1"]})
        return int(raw[:19]) if len(raw) <= 19 else 10**19  # past any last page: 404, never a huge int()

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        parameters[0]["schema"]["minimum"] = 1
        return parameters
