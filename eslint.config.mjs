// `npm run lint`: typescript-eslint's type-aware recommended rules, plus the layer rule of
// README's Architecture section. Layers are the top-level folders of src/, so a new folder
// inside one (src/serving/tool-parsers, src/model/architectures, src/modules/audio) needs no edit.

import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** src/ folders from top to bottom: each may import its own folder and those below it. */
export const LAYERS = ['modules', 'common', 'serving', 'config', 'engine', 'model'];
/** Entry points above every layer: nothing in a layer may import them. */
const ENTRY_POINTS = ['src/main.ts', 'src/cli', 'src/app-factory.ts', 'src/app.module.ts'];
/** The HTTP framework: only src/modules, src/common and the entry points may import it. */
const HTTP_PACKAGES = ['@nestjs/*', 'fastify', '@fastify/*', 'class-validator', 'class-transformer', 'reflect-metadata'];

const root = import.meta.dirname;

const layerZones = LAYERS.map((layer, i) => ({
  target: `src/${layer}`,
  from: [...ENTRY_POINTS, ...LAYERS.slice(0, i).map((above) => `src/${above}`)],
  message: `src/${layer} may import only ${LAYERS.slice(i).map((l) => `src/${l}`).join(', ')} (README: Architecture).`,
}));

const plainLayers = LAYERS.slice(LAYERS.indexOf('serving'));

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'bench/peer/', '.bench-cache/', 'coverage/'] },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json', '.node'] })],
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: root, zones: layerZones }],
      // tsc's noUnusedLocals / noUnusedParameters report these (with `_` for intended ones).
      '@typescript-eslint/no-unused-vars': 'off',
    },
  },
  {
    files: plainLayers.map((layer) => `src/${layer}/**/*.ts`),
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: HTTP_PACKAGES,
              message: 'Nest/Fastify belong to src/modules, src/common and the entry points (README: Architecture).',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests read JSON bodies and fixtures of loose shape and assert on them field by field;
    // their fakes implement async interfaces with generators that need not await or yield.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      'require-yield': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain Node scripts (CommonJS), outside the TypeScript project.
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['**/*.mjs'], languageOptions: { sourceType: 'module' } },
);
