// Writes docs/block-record.schema.json from src/library/record-schema.ts (run after
// `npm run build`: node dist/scripts/block-record-schema.js).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blockRecordSchemaText } from '../src/library/record-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const file = path.join(root, 'docs', 'block-record.schema.json');
writeFileSync(file, blockRecordSchemaText());
console.log(`wrote ${file}`);
