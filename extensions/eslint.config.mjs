// eslint 9 flat config for the extension's TypeScript (`npm run lint:check`, run by `make lint`).
// typescript-eslint's recommended rules (not type-aware: fast on a shared machine); formatting is
// prettier's (.prettierrc), so eslint-config-prettier turns off the rules that would fight it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/', 'yitong_lab/', 'src/api/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      curly: ['error', 'all'],
      eqeqeq: ['error', 'smart'],
      'prefer-const': 'error'
    }
  }
);
