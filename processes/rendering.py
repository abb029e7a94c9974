"""Process bodies are Markdown from outside the organization: render, then sanitize."""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

# Raw HTML in the source is not rendered at all; nh3 then strips anything unsafe that Markdown
# itself can produce (javascript: links and the like).
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

_ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "img",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "th": {"align"}, "td": {"align"}}


def render_markdown(text: str) -> SafeString:
    html = _markdown.render(text or "")
    clean = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above
