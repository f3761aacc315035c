// The default theme, with room for the reference tables (custom.css).
import DefaultTheme from 'vitepress/theme';
import './custom.css';

export default DefaultTheme;
