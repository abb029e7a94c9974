"""Process bodies are Markdown from outside the organization: render, then sanitize."""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

# Raw HTML in the source is not rendered at all; nh3 then strips anything unsafe that Markdown
# itself can produce (javascript: links and the like).
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _image_as_link(renderer, tokens, index, options, env) -> str:
    """An image is shown as a link to it: a page never loads a picture from another server (it
    would tell that server who read the process, and when)."""
    token = tokens[index]
    source = token.attrGet("src") or ""
    label = renderer.renderInline(token.children or [], options, env) or escapeHtml(source)
    return f'<a href="{escapeHtml(source)}">{label} (image)</a>'


_markdown.add_render_rule("image", _image_as_link)

_ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


def _shifted_headings(tokens, below: int) -> None:
    """Headings of the text sit under the page's own: `# Title` under an h2 becomes an h3 (h6 at
    most), so the page's headings stay in order for people who navigate by them."""
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(int(token.tag[1]) + below, 6)
            token.tag = f"h{level}"


def render_markdown(text: str, *, under_heading: int = 0) -> SafeString:
    """`under_heading`: the level of the page heading the text sits under (2: its # becomes h3)."""
    tokens = _markdown.parse(text or "")
    if under_heading:
        _shifted_headings(tokens, under_heading)
    html = _markdown.renderer.render(tokens, _markdown.options, {})
    clean = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitized by nh3 just above
