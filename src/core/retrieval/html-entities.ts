/**
 * Character references in HTML text (WHATWG HTML 13.2.5.72): numeric ones (`&#233;`, `&#xE9;`) and the named ones
 * documents use in practice (markup, typography, and every Latin-1 letter); an unknown name stays as written.
 */
const NAMED = new Map<string, string>(
  Object.entries({
    amp: '&',
    lt: '<',
    gt: '>',
    quot: '"',
    apos: "'",
    nbsp: '\u00a0',
    ensp: '\u2002',
    emsp: '\u2003',
    thinsp: '\u2009',
    zwnj: '\u200c',
    zwj: '\u200d',
    lrm: '\u200e',
    rlm: '\u200f',
    ndash: '\u2013',
    mdash: '\u2014',
    lsquo: '\u2018',
    rsquo: '\u2019',
    sbquo: '\u201a',
    ldquo: '\u201c',
    rdquo: '\u201d',
    bdquo: '\u201e',
    dagger: '\u2020',
    Dagger: '\u2021',
    bull: '\u2022',
    hellip: '\u2026',
    permil: '\u2030',
    prime: '\u2032',
    Prime: '\u2033',
    lsaquo: '\u2039',
    rsaquo: '\u203a',
    euro: '\u20ac',
    trade: '\u2122',
    larr: '\u2190',
    uarr: '\u2191',
    rarr: '\u2192',
    darr: '\u2193',
    harr: '\u2194',
    minus: '\u2212',
    le: '\u2264',
    ge: '\u2265',
    ne: '\u2260',
    asymp: '\u2248',
    infin: '\u221e',
    OElig: '\u0152',
    oelig: '\u0153',
    Scaron: '\u0160',
    scaron: '\u0161',
    Yuml: '\u0178',
    fnof: '\u0192',
    circ: '\u02c6',
    tilde: '\u02dc',
  }),
);

/** The names of U+00A1..U+00FF, in order (HTML 4's Latin-1 set, kept by HTML5). */
const LATIN1 =
  'iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro ' +
  'para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil ' +
  'Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave ' +
  'Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml ' +
  'igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute ' +
  'thorn yuml';
LATIN1.split(' ').forEach((name, i) => NAMED.set(name, String.fromCharCode(0xa1 + i)));

/** Bounded repetitions and no nesting: the scan is linear in the text whatever it holds. */
const REFERENCE = /&(?:#(\d{1,8})|#[xX]([0-9a-fA-F]{1,7})|([a-zA-Z][a-zA-Z0-9]{1,31}));?/g;

function codePointText(code: number): string {
  // NUL, surrogates and code points past Unicode are replaced, as the HTML parser does.
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
  return String.fromCodePoint(code);
}

export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(REFERENCE, (whole, decimal?: string, hex?: string, name?: string) => {
    if (decimal !== undefined) return codePointText(Number.parseInt(decimal, 10));
    if (hex !== undefined) return codePointText(Number.parseInt(hex, 16));
    // A named reference needs its `;` (the legacy forms without it are not worth their ambiguity here).
    const named = name !== undefined && whole.endsWith(';') ? NAMED.get(name) : undefined;
    return named ?? whole;
  });
}
