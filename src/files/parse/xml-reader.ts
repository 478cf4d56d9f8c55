// Streaming XML for workbook parts, on saxes (a strict, non-validating SAX parser: it never loads
// external entities and refuses references to entities a DTD declares, so "billion laughs"
// fails as an undefined entity). Bounds on top of the zip's: element depth, and the bytes one
// token (text node, tag, attribute) may take before the parser reports it, since saxes keeps
// an unfinished token in memory.
import { StringDecoder } from "node:string_decoder";
import { SaxesParser } from "saxes";
import { ZipRefusal, type ZipArchive, type ZipPart } from "./zip-guard.ts";

/** Callbacks with element names stripped of their prefix ("x:row" → "row"); attribute names kept. */
export interface XmlHandler {
  open(name: string, attributes: Readonly<Record<string, string>>): void;
  close(name: string): void;
  text(text: string): void;
}

// SpreadsheetML nests ~7 deep (worksheet/sheetData/row/c/is/r/t); extension lists a little more.
const MAX_DEPTH = 100;
// Excel caps a cell at 32,767 characters (≤ ~200 KB as escaped UTF-8); nothing honest is 4 MiB.
const MAX_TOKEN_BYTES = 4 * 1024 * 1024;

const localName = (name: string): string => {
  const colon = name.indexOf(":");
  return colon < 0 ? name : name.slice(colon + 1);
};

const IGNORE: XmlHandler = { open: () => undefined, close: () => undefined, text: () => undefined };

/** What a file may spend on elements, all its parts together (read-budget.ts). */
export interface ElementBudget {
  /** Called for every element opened; throws ZipRefusal past the budget. */
  openElement(): void;
}

/** One part's XML, fed chunk by chunk; every refusal is thrown from `write`/`end`. */
export class XmlPartReader {
  /**
   * V8 drops saxes' optimised code when the last parser of its object shape dies in a full GC,
   * and re-learns it on the next upload: with a full GC between parses the bench's 10,000-row
   * workbook took 700 ms instead of 240 ms. One idle reader kept for the process keeps the shape.
   */
  static readonly shapeKeeper: XmlPartReader = new XmlPartReader("", IGNORE);

  private readonly parser = new SaxesParser<{ xmlns: false; position: false }>({
    xmlns: false,
    position: false,
  });
  private readonly decoder = new StringDecoder("utf8");
  private depth = 0;
  private fed = 0;
  private fedAtLastEvent = 0;

  constructor(
    private readonly partName: string,
    handler: XmlHandler,
    budget: ElementBudget | null = null,
  ) {
    this.parser.on("opentag", (tag) => {
      budget?.openElement();
      this.depth += 1;
      if (this.depth > MAX_DEPTH) {
        throw new ZipRefusal(
          `The workbook part "${partName}" nests elements more than ${MAX_DEPTH.toString()} deep; save the workbook again in Excel.`,
        );
      }
      this.fedAtLastEvent = this.fed;
      handler.open(localName(tag.name), tag.attributes);
    });
    this.parser.on("closetag", (tag) => {
      this.depth -= 1;
      this.fedAtLastEvent = this.fed;
      handler.close(localName(tag.name));
    });
    this.parser.on("text", (text) => {
      this.fedAtLastEvent = this.fed;
      handler.text(text);
    });
    this.parser.on("cdata", (text) => {
      this.fedAtLastEvent = this.fed;
      handler.text(text);
    });
  }

  write(chunk: Buffer): void {
    this.fed += chunk.length;
    this.parser.write(this.decoder.write(chunk));
    if (this.fed - this.fedAtLastEvent > MAX_TOKEN_BYTES) {
      throw new ZipRefusal(
        `The workbook part "${this.partName}" holds a single XML node larger than ${(MAX_TOKEN_BYTES / 1024 / 1024).toString()} MB; save the workbook again in Excel.`,
      );
    }
  }

  end(): void {
    this.parser.write(this.decoder.end());
    this.parser.close();
  }
}

/** Reads a whole part through `handler`, its elements charged to `budget`. */
export async function readXmlPart(
  zip: ZipArchive,
  part: ZipPart,
  handler: XmlHandler,
  budget: ElementBudget,
): Promise<void> {
  const reader = new XmlPartReader(part.name, handler, budget);
  for await (const chunk of zip.inflate(part)) reader.write(chunk);
  reader.end();
}

/** One element of a small part: its local name and attributes. */
export interface XmlElement {
  name: string;
  attributes: Readonly<Record<string, string>>;
}

/** The elements named in `names` of a small, already inflated part (rels, workbook.xml), in order. */
export function elementsOf(partName: string, xml: Buffer, names: ReadonlySet<string>): XmlElement[] {
  const found: XmlElement[] = [];
  const reader = new XmlPartReader(partName, {
    ...IGNORE,
    open: (name, attributes) => {
      if (names.has(name)) found.push({ name, attributes });
    },
  });
  reader.write(xml);
  reader.end();
  return found;
}
