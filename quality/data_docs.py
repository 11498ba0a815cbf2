"""Great Expectations Data Docs: static HTML pages of validations, built into a directory.

A file-based GE context is rooted at the directory (``<docs_dir>/gx/``); each validation run
with it is stored there, and :func:`build_data_docs` renders the site under
``<docs_dir>/gx/uncommitted/data_docs/local_site/``. Building works offline (the pages link
their CSS from CDNs, so they render unstyled without network). One writer per directory at a
time: GE's file stores are not safe for concurrent writers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from quality.errors import QualityError

if TYPE_CHECKING:
    from great_expectations.data_context import AbstractDataContext, FileDataContext

SITE_NAME = "local_site"


@dataclass(frozen=True)
class DataDocsLinks:
    """Where the built Data Docs are.

    Attributes:
        index: the site's ``index.html`` (lists every stored validation and suite).
        page: the page of one validation, when one was asked for.
    """

    index: str
    page: str | None = None


def quiet(context: AbstractDataContext) -> AbstractDataContext:
    """Turn off GE's progress bars (they flood logs and Dagster's captured output)."""
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return context


def file_context(docs_dir: str | Path) -> FileDataContext:
    """A file-based GE context rooted at ``docs_dir`` (created on first use).

    Args:
        docs_dir: the directory that holds the GE project (``gx/``) and its Data Docs.
    """
    import great_expectations as gx

    root = Path(docs_dir)
    root.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=str(root))
    quiet(context)
    return context


def _url_to_path(url: str | None) -> str | None:
    if not url:
        return None
    parsed = urlparse(url)
    return unquote(parsed.path) if parsed.scheme == "file" else url


def _site_url(context: AbstractDataContext, resource_identifier: Any = None) -> str | None:
    sites = context.get_docs_sites_urls(
        resource_identifier=resource_identifier, site_name=SITE_NAME, only_if_exists=True
    )
    return _url_to_path(sites[0].get("site_url")) if sites else None


def build_data_docs(
    docs_dir: str | Path | None = None,
    validation_id: Any = None,
    *,
    context: AbstractDataContext | None = None,
) -> DataDocsLinks:
    """Build (or rebuild) the Data Docs site of a directory's GE project.

    Args:
        docs_dir: the directory given to :func:`file_context` (or to ``validate_table`` /
            ``compare_tables`` as ``docs_dir``). Ignored when ``context`` is given.
        validation_id: a GE ``ValidationResultIdentifier`` whose page to return.
        context: an already open file context (saves re-reading its configuration).

    Returns:
        The index path and, with ``validation_id``, the validation's page path.

    Raises:
        QualityError: neither a directory nor a context was given, or the site was not built.
    """
    if context is None:
        if docs_dir is None:
            msg = "build_data_docs needs docs_dir (a directory) or an open file context"
            raise QualityError(msg)
        context = file_context(docs_dir)
    context.build_data_docs(site_names=[SITE_NAME])
    index = _site_url(context)
    if index is None or not Path(index).is_file():
        msg = f"GE built no Data Docs site {SITE_NAME!r}; check {context.root_directory}"
        raise QualityError(msg)
    page = _site_url(context, validation_id) if validation_id is not None else None
    return DataDocsLinks(index=index, page=page)
